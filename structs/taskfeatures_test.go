package structs

import (
	"strings"
	"testing"
	"time"
)

func TestTaskGroupFeatureValidation(t *testing.T) {
	main := func() *Task { return &Task{Name: "main", Driver: "raw_exec"} }
	hook := func(name, h string, sidecar bool) *Task {
		return &Task{Name: name, Driver: "raw_exec", Lifecycle: &TaskLifecycleConfig{Hook: h, Sidecar: sidecar}}
	}
	dur := func(d time.Duration) *time.Duration { return &d }
	no := false
	tests := []struct {
		name string
		tg   *TaskGroup
		want string // "" for valid
	}{
		{"every hook", &TaskGroup{Tasks: []*Task{hook("a", "prestart", true), hook("b", "poststart", false), hook("c", "poststop", false), main()}}, ""},
		{"bad hook", &TaskGroup{Tasks: []*Task{hook("a", "later", false), main()}}, `hook "later" is not one of`},
		{"no main task", &TaskGroup{Tasks: []*Task{hook("a", "prestart", false)}}, "needs at least one main task"},
		{"two leaders", &TaskGroup{Tasks: []*Task{{Name: "a", Driver: "d", Leader: true}, {Name: "b", Driver: "d", Leader: true}}}, "at most one task may be the leader"},
		{"csi", &TaskGroup{Tasks: []*Task{main()}, Volumes: map[string]*VolumeRequest{"x": {Type: "csi", Source: "x"}}}, `volume "x": type "csi": Drover has no CSI integration`},
		{"mount without volume", &TaskGroup{Tasks: []*Task{{Name: "m", Driver: "d", VolumeMounts: []*VolumeMount{{Volume: "v", Destination: "/d"}}}}}, `the group has no volume "v"`},
		{"migrate", &TaskGroup{Tasks: []*Task{main()}, EphemeralDisk: &EphemeralDisk{SizeMB: 100, Migrate: true}}, "migrate is not supported"},
		{"tiny disk", &TaskGroup{Tasks: []*Task{main()}, EphemeralDisk: &EphemeralDisk{SizeMB: 1}}, "size 1 MB must be between"},
		{"max_client_disconnect", &TaskGroup{Tasks: []*Task{main()}, MaxClientDisconnect: dur(time.Minute)}, ""},
		{"both windows", &TaskGroup{Tasks: []*Task{main()}, MaxClientDisconnect: dur(time.Minute), Disconnect: &DisconnectStrategy{LostAfter: time.Minute}}, "cannot both be set"},
		{"replace false", &TaskGroup{Tasks: []*Task{main()}, Disconnect: &DisconnectStrategy{LostAfter: time.Hour, Replace: &no}}, ""},
		{"stop_on_client_after", &TaskGroup{Tasks: []*Task{main()}, Disconnect: &DisconnectStrategy{StopOnClientAfter: dur(time.Minute)}}, "stop_on_client_after is not supported yet"},
		{"keep_replacement", &TaskGroup{Tasks: []*Task{main()}, Disconnect: &DisconnectStrategy{Reconcile: ReconcileOptionKeepReplacement}}, `reconcile "keep_replacement" is not supported yet`},
		{"default disconnect", &TaskGroup{Tasks: []*Task{main()}, Disconnect: &DisconnectStrategy{Reconcile: ReconcileOptionKeepOriginal}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.tg.Name = "g"
			err := tt.tg.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("got %v, want valid", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestDiskCountedWhenReported: AllocsFit (the plan applier's re-check)
// counts ephemeral disks against a node that reports its disk.
func TestDiskCountedWhenReported(t *testing.T) {
	node := &Node{ID: "n", NodeResources: &NodeResources{Cpu: NodeCpuResources{CpuShares: 1000}, Memory: NodeMemoryResources{MemoryMB: 1000}, Disk: NodeDiskResources{DiskMB: 500}}}
	alloc := func(id string) *Allocation {
		return &Allocation{ID: id, AllocatedResources: &AllocatedResources{Shared: AllocatedSharedResources{DiskMB: 300}}}
	}
	if fit, _ := AllocsFit(node, []*Allocation{alloc("a")}); !fit {
		t.Error("one 300 MB disk on 500 MB: does not fit")
	}
	if fit, dim := AllocsFit(node, []*Allocation{alloc("a"), alloc("b")}); fit || dim != "disk" {
		t.Errorf("two 300 MB disks on 500 MB: fit %v (%s), want out of disk", fit, dim)
	}
	node.NodeResources.Disk.DiskMB = 0
	if fit, _ := AllocsFit(node, []*Allocation{alloc("a"), alloc("b")}); !fit {
		t.Error("a node reporting no disk counted it")
	}
}
