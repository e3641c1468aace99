package jobspec

import (
	"strings"
	"testing"
)

// groupSrc wraps group body lines in a job; the group starts on line 3,
// its body on line 4.
func groupSrc(body string) string {
	return "job \"x\" {\n  datacenters = [\"dc1\"]\n  group \"g\" {\n" + body + "\n  }\n}\n"
}

const mainTask = "    task \"main\" {\n      driver = \"raw_exec\"\n    }"

func TestTaskFeatureErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{
			name: "bad hook",
			src:  groupSrc(mainTask + "\n    task \"t\" {\n      driver = \"raw_exec\"\n      lifecycle {\n        hook = \"prerun\"\n      }\n    }"),
			want: `job.hcl:10,16: Invalid value; hook = "prerun" is not one of prestart, poststart, poststop.`,
		},
		{
			name: "lifecycle without hook",
			src:  groupSrc(mainTask + "\n    task \"t\" {\n      driver = \"raw_exec\"\n      lifecycle {\n        sidecar = true\n      }\n    }"),
			want: `job.hcl:9,7: Missing required argument; ...`,
		},
		{
			name: "poststop sidecar",
			src:  groupSrc(mainTask + "\n    task \"t\" {\n      driver = \"raw_exec\"\n      lifecycle {\n        hook = \"poststop\"\n        sidecar = true\n      }\n    }"),
			want: `job.hcl:9,7: Invalid lifecycle block; lifecycle: a poststop task cannot be a sidecar (nothing runs beside it).`,
		},
		{
			name: "no main task",
			src:  groupSrc("    task \"t\" {\n      driver = \"raw_exec\"\n      lifecycle {\n        hook = \"prestart\"\n      }\n    }"),
			want: `job.hcl:1,1: Invalid job; job "x": group "g": needs at least one main task (a task without a lifecycle block)`,
		},
		{
			name: "two leaders",
			src:  groupSrc("    task \"a\" {\n      driver = \"raw_exec\"\n      leader = true\n    }\n    task \"b\" {\n      driver = \"raw_exec\"\n      leader = true\n    }"),
			want: `job.hcl:1,1: Invalid job; job "x": group "g": at most one task may be the leader: ["a" "b"]`,
		},
		{
			name: "csi volume",
			src:  groupSrc("    volume \"x\" {\n      type = \"csi\"\n      source = \"x\"\n    }\n" + mainTask),
			want: `job.hcl:4,5: Invalid volume block; volume "x": type "csi": Drover has no CSI integration.`,
		},
		{
			name: "volume without source",
			src:  groupSrc("    volume \"x\" {\n      type = \"host\"\n    }\n" + mainTask),
			want: `job.hcl:4,5: Invalid volume block; volume "x": missing source (the name of a client's host_volume).`,
		},
		{
			name: "mount of unknown volume",
			src:  groupSrc("    task \"main\" {\n      driver = \"raw_exec\"\n      volume_mount {\n        volume = \"nope\"\n        destination = \"/d\"\n      }\n    }"),
			want: `job.hcl:1,1: Invalid job; job "x": group "g": task "main": volume_mount: the group has no volume "nope"`,
		},
		{
			name: "mount destination escapes",
			src:  groupSrc("    volume \"v\" {\n      type = \"host\"\n      source = \"v\"\n    }\n    task \"main\" {\n      driver = \"raw_exec\"\n      volume_mount {\n        volume = \"v\"\n        destination = \"../etc\"\n      }\n    }"),
			want: `job.hcl:1,1: Invalid job; job "x": group "g": task "main": volume_mount "v": destination "../etc" must not contain ".."`,
		},
		{
			name: "mount without destination",
			src:  groupSrc("    task \"main\" {\n      driver = \"raw_exec\"\n      volume_mount {\n        volume = \"v\"\n      }\n    }"),
			want: `job.hcl:6,7: Missing required argument; The argument "destination" is required in a volume_mount block.`,
		},
		{
			name: "ephemeral disk migrate",
			src:  groupSrc("    ephemeral_disk {\n      migrate = true\n    }\n" + mainTask),
			want: `job.hcl:4,5: Invalid ephemeral_disk block; ephemeral_disk: migrate is not supported: ...`,
		},
		{
			name: "ephemeral disk too small",
			src:  groupSrc("    ephemeral_disk {\n      size = 5\n    }\n" + mainTask),
			want: `job.hcl:5,14: ...`,
		},
		{
			name: "max_client_disconnect with disconnect",
			src:  groupSrc("    max_client_disconnect = \"5m\"\n    disconnect {\n      lost_after = \"1h\"\n    }\n" + mainTask),
			want: `job.hcl:1,1: Invalid job; job "x": group "g": max_client_disconnect and the disconnect block cannot both be set (use disconnect.lost_after)`,
		},
		{
			name: "disconnect stop_on_client_after",
			src:  groupSrc("    disconnect {\n      stop_on_client_after = \"1h\"\n    }\n" + mainTask),
			want: `job.hcl:1,1: Invalid job; job "x": group "g": disconnect: stop_on_client_after is not supported yet ...`,
		},
		{
			name: "disconnect bad reconcile",
			src:  groupSrc("    disconnect {\n      reconcile = \"newest\"\n    }\n" + mainTask),
			want: `job.hcl:5,19: Invalid value; reconcile = "newest" is not one of keep_original, keep_replacement, best_score, longest_running.`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFirstError(t, "job.hcl", tt.src, tt.want)
		})
	}
}

func TestTaskFeatureJSONErrors(t *testing.T) {
	src := `{"ID": "x", "Datacenters": ["dc1"], "TaskGroups": [{"Name": "g", "Count": 1,
  "Volumes": {"v": {"Type": "csi", "Source": "v"}},
  "Tasks": [{"Name": "t", "Driver": "raw_exec", "Lifecycle": {"Hook": "sometime"}}]}]}`
	_, err := Parse("job.json", []byte(src))
	if err == nil {
		t.Fatal("got no error")
	}
	for _, want := range []string{`lifecycle: hook "sometime" is not one of prestart, poststart, poststop`, `volume "v": type "csi": Drover has no CSI integration`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want it to contain %q", err, want)
		}
	}
}
