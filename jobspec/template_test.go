package jobspec

import (
	"reflect"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestTemplateAndArtifactBlocks(t *testing.T) {
	src := inTask(`template {
        data        = "DB_PASS={{ with nomadVar \"nomad/jobs/web\" }}{{ .db_pass }}{{ end }}"
        destination = "secrets/env"
        env         = true
        change_mode = "signal"
        change_signal = "SIGHUP"
        splay       = "1s"
      }
      artifact {
        source      = "https://example.com/model.tar.gz"
        destination = "local/model"
        mode        = "dir"
        options {
          checksum = "sha256:abcd"
        }
        headers {
          X-Token = "t"
        }
      }`)
	job, err := Parse("job.hcl", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	task := job.TaskGroups[0].Tasks[0]
	wantT := &structs.Template{
		EmbeddedTmpl: `DB_PASS={{ with nomadVar "nomad/jobs/web" }}{{ .db_pass }}{{ end }}`,
		DestPath:     "secrets/env", Envvars: true, ChangeMode: "signal", ChangeSignal: "SIGHUP",
		Splay: 1e9, Perms: "0644", LeftDelim: "{{", RightDelim: "}}",
	}
	if len(task.Templates) != 1 || !reflect.DeepEqual(task.Templates[0], wantT) {
		t.Errorf("templates = %+v, want %+v", task.Templates[0], wantT)
	}
	wantA := &structs.TaskArtifact{GetterSource: "https://example.com/model.tar.gz", RelativeDest: "local/model", GetterMode: "dir",
		GetterOptions: map[string]string{"checksum": "sha256:abcd"}, GetterHeaders: map[string]string{"X-Token": "t"}}
	if len(task.Artifacts) != 1 || !reflect.DeepEqual(task.Artifacts[0], wantA) {
		t.Errorf("artifacts = %+v, want %+v", task.Artifacts[0], wantA)
	}
}

func TestTemplateAndArtifactErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"escaping destination", `template {
        data = "x"
        destination = "../../etc/passwd"
      }`, `job.hcl:6,7: Invalid template block; template: destination: "../../etc/passwd" escapes the task directory`},
		{"no data nor source", `template { destination = "a" }`, `job.hcl:6,7: Invalid template block; template: needs data or source`},
		{"bad change mode", `template {
        data = "x"
        destination = "a"
        change_mode = "reload"
      }`, `job.hcl:9,23: Invalid value`},
		{"script refused", `template {
        data = "x"
        destination = "a"
        change_mode = "script"
      }`, `change_mode "script" is not supported by Drover yet`},
		{"bad signal", `template {
        data = "x"
        destination = "a"
        change_mode = "signal"
        change_signal = "SIGNOPE"
      }`, `change_signal "SIGNOPE" is not a signal name`},
		{"missing destination", `template { data = "x" }`, `job.hcl:6,7: Missing required argument`},
		{"artifact absolute destination", `artifact {
        source = "https://example.com/a"
        destination = "/etc"
      }`, `artifact: destination: "/etc" must be relative to the task directory`},
		{"artifact bad checksum", `artifact {
        source = "https://example.com/a"
        options { checksum = "crc32:1" }
      }`, `checksum "crc32:1": want type:value`},
		{"artifact missing source", `artifact { destination = "local" }`, `job.hcl:6,7: Missing required argument`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.hcl", []byte(inTask(tt.body)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestTemplateAndArtifactJSON(t *testing.T) {
	src := `{"Job":{"ID":"web","Datacenters":["dc1"],"TaskGroups":[{"Name":"g","Tasks":[{"Name":"t","Driver":"raw_exec",
"Templates":[{"EmbeddedTmpl":"A={{ env \"X\" }}","DestPath":"local/a.env","Envvars":true}],
"Artifacts":[{"GetterSource":"https://example.com/a.tgz","GetterOptions":{"checksum":"sha256:ab"}}]}]}]}}`
	job, err := Parse("job.json", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	task := job.TaskGroups[0].Tasks[0]
	if tm := task.Templates[0]; tm.DestPath != "local/a.env" || !tm.Envvars || tm.ChangeMode != "restart" {
		t.Errorf("template = %+v", tm)
	}
	if a := task.Artifacts[0]; a.RelativeDest != "local/" || a.GetterMode != "any" || a.GetterOptions["checksum"] != "sha256:ab" {
		t.Errorf("artifact = %+v", a)
	}
	bad := strings.Replace(src, `"local/a.env"`, `"../a.env"`, 1)
	if _, err := Parse("job.json", []byte(bad)); err == nil || !strings.Contains(err.Error(), "escapes the task directory") {
		t.Errorf("escaping DestPath in JSON: %v", err)
	}
}
