package rpc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/projectfs"
)

// A problem with config.json's models, which fails a task's start, is
// said to be the user's config, not the project's settings.
func TestModelsConfigErrorIsTheUsers(t *testing.T) {
	err := fmt.Errorf("open the model gateway to the task: %w", &projectfs.ConfigError{File: "/home/me/.config/pilot-sandbox/config.json", Field: "models.anthropic.apiKeyEnv", Reason: "must name a variable"})
	w := toWire(err)
	if w.Code != codeStartFailed || !strings.HasPrefix(w.Message, "config.json's models cannot be used") || !strings.Contains(w.Message, "models.anthropic.apiKeyEnv") {
		t.Errorf("%d %s", w.Code, w.Message)
	}
}
