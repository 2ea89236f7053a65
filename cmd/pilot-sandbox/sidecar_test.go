package main

import (
	"reflect"
	"testing"

	"github.com/pilot-sandbox/pilot-sandbox/activity"
	"github.com/pilot-sandbox/pilot-sandbox/ports"
	"github.com/pilot-sandbox/pilot-sandbox/recording"
	"github.com/pilot-sandbox/pilot-sandbox/service"
	"github.com/pilot-sandbox/pilot-sandbox/tasks"
	"github.com/pilot-sandbox/pilot-sandbox/tools"
)

// TestEverySliceIsServed: a slice of rpc.Services the wiring leaves out
// would answer every call of its group with an internal error (a nil
// interface called), and nothing but a real client would notice.
func TestEverySliceIsServed(t *testing.T) {
	svc := reflect.ValueOf(sidecarServices(&service.Manager{}, &ports.Carrier{}, &tools.Set{}, newNetwork(&service.Manager{}, t.TempDir()), &tasks.Manager{}, &recording.Recorder{}, &timeline{control: &activity.Control{}}))
	for i := range svc.NumField() {
		if svc.Field(i).IsNil() {
			t.Errorf("rpc.Services.%s is not served", svc.Type().Field(i).Name)
		}
	}
}
