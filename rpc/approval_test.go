package rpc

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/images"
	"github.com/pilot-sandbox/pilot-sandbox/service"
)

// A start that waits for the user's approval is needs_approval, with what
// to approve in data.approval; a wrong digest to sandbox/approve is
// invalid_params naming digest.
func TestApprovalOnTheWire(t *testing.T) {
	ask := service.Approval{
		Kind: service.ApprovalDockerfile, Summary: "build .pilot/Dockerfile", Digest: "sha256:abc",
		Content: "FROM ${PILOT_BASE}\nCOPY app.sh /bin/\n", Files: []images.ShownFile{{Path: ".pilot/app.sh", Size: 3, Text: "hi\n"}},
		Diff: "--- approved\n+++ asked now\n@@ -1 +1,2 @@\n FROM ${PILOT_BASE}\n+COPY app.sh /bin/\n", Warnings: []string{"line 3: ..."},
	}
	wire := toWire(fmt.Errorf("start: %w", &service.ApprovalError{Project: "/p", Approval: ask}))
	if wire.Code != -32011 {
		t.Fatalf("code %d, want -32011", wire.Code)
	}
	var data struct {
		Kind     string           `json:"kind"`
		Approval service.Approval `json:"approval"`
	}
	if err := json.Unmarshal(*wire.Data, &data); err != nil {
		t.Fatal(err)
	}
	if data.Kind != "needs_approval" || !reflect.DeepEqual(data.Approval, ask) {
		t.Errorf("data = %+v, want needs_approval with %+v", data, ask)
	}
	wire = toWire(&service.ArgumentError{Name: "digest", Reason: "is not what the project asks now"})
	if wire.Code != codeInvalidParams || fieldOf(t, &service.ArgumentError{Name: "digest"}) != "digest" {
		t.Errorf("a wrong digest is %d %s", wire.Code, wire.Message)
	}
}
