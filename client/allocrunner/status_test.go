package allocrunner

import (
	"errors"
	"testing"
	"time"

	"github.com/droverhq/drover/structs"
)

var errTest = errors.New("test error")

func TestClientStatus(t *testing.T) {
	started := time.Unix(100, 0)
	pending := &structs.TaskState{State: structs.TaskStatePending}
	running := &structs.TaskState{State: structs.TaskStateRunning, StartedAt: started}
	restarting := &structs.TaskState{State: structs.TaskStatePending, StartedAt: started, Restarts: 1}
	done := &structs.TaskState{State: structs.TaskStateDead, StartedAt: started}
	failed := &structs.TaskState{State: structs.TaskStateDead, StartedAt: started, Failed: true}
	tests := []struct {
		name   string
		states map[string]*structs.TaskState
		want   string
		desc   string
	}{
		{"no tasks", nil, structs.AllocClientStatusPending, DescPending},
		{"nothing started", map[string]*structs.TaskState{"a": pending, "b": pending}, structs.AllocClientStatusPending, DescPending},
		{"one of two started", map[string]*structs.TaskState{"a": running, "b": pending}, structs.AllocClientStatusPending, DescStarting},
		{"all started", map[string]*structs.TaskState{"a": running, "b": running}, structs.AllocClientStatusRunning, DescRunning},
		{"restarting still running", map[string]*structs.TaskState{"a": restarting, "b": running}, structs.AllocClientStatusRunning, DescRunning},
		{"one done one running", map[string]*structs.TaskState{"a": done, "b": running}, structs.AllocClientStatusRunning, DescRunning},
		{"all done", map[string]*structs.TaskState{"a": done, "b": done}, structs.AllocClientStatusComplete, DescComplete},
		{"any failed", map[string]*structs.TaskState{"a": failed, "b": running}, structs.AllocClientStatusFailed, DescFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, desc := ClientStatus(tt.states)
			if got != tt.want || desc != tt.desc {
				t.Errorf("ClientStatus() = %q, %q, want %q, %q", got, desc, tt.want, tt.desc)
			}
		})
	}
}
