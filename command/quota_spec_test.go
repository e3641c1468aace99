package command

import (
	"reflect"
	"strings"
	"testing"

	"github.com/droverhq/drover/structs"
)

func TestParseQuotaSpec(t *testing.T) {
	teamA := &structs.QuotaSpec{Name: "team-a-gpus", Description: "Team A", Limits: []*structs.QuotaLimit{{
		Region: "global", RegionLimit: &structs.RegionLimit{CPU: 4000, MemoryMB: 8192, GPUs: 2, GPUMemoryMB: 160 << 10},
	}}}
	tests := []struct {
		name, file, src string
		want            *structs.QuotaSpec
		wantErr         string
	}{
		{name: "labelled block", file: "q.hcl", want: teamA, src: `
quota "team-a-gpus" {
  description = "Team A"
  limit {
    region = "global"
    region_limit {
      gpu        = 2
      cpu        = 4000
      memory     = 8192
      gpu_memory = "160 GiB"
    }
  }
}`},
		{name: "nomad's top-level form, sizes as strings", file: "q.hcl", want: teamA, src: `
name        = "team-a-gpus"
description = "Team A"
limit {
  region = "global"
  region_limit {
    gpu        = 2
    cpu        = 4000
    memory     = "8 GiB"
    gpu_memory = 163840
  }
}`},
		{name: "json", file: "q.json", want: teamA, src: `{"Name": "team-a-gpus", "Description": "Team A",
  "Limits": [{"Region": "global", "RegionLimit": {"CPU": 4000, "MemoryMB": 8192, "GPUs": 2, "GPUMemoryMB": 163840}}]}`},
		{name: "none allowed", file: "q.hcl", src: `quota "q" {
  limit {
    region = "eu"
    region_limit {
      gpu        = -1
      gpu_memory = "-1"
    }
  }
}`, want: &structs.QuotaSpec{Name: "q", Limits: []*structs.QuotaLimit{{Region: "eu", RegionLimit: &structs.RegionLimit{GPUs: -1, GPUMemoryMB: -1}}}}},

		{name: "unknown attribute", file: "q.hcl", src: "quota \"q\" {\n  limit {\n    region = \"global\"\n    region_limit {\n      cores = 2\n    }\n  }\n}",
			wantErr: `q.hcl:5,7-12: Unsupported argument; An argument named "cores" is not expected here.`},
		{name: "bad size", file: "q.hcl", src: "quota \"q\" {\n  limit {\n    region = \"global\"\n    region_limit { gpu_memory = \"lots\" }\n  }\n}",
			wantErr: `q.hcl:4,33-39: gpu_memory: "lots" is not a size`},
		{name: "fraction of a MiB", file: "q.hcl", src: "quota \"q\" {\n  limit {\n    region = \"global\"\n    region_limit { memory = 1.5 }\n  }\n}",
			wantErr: "memory: 1.5 is not a whole number of MiB"},
		{name: "missing region_limit", file: "q.hcl", src: `quota "q" {
  limit { region = "global" }
}`, wantErr: `missing region_limit`},
		{name: "missing region", file: "q.hcl", src: `quota "q" {
  limit {
    region_limit { gpu = 1 }
  }
}`, wantErr: `Missing required argument; The argument "region" is required`},
		{name: "two regions alike", file: "q.hcl", src: `quota "q" {
  limit {
    region = "global"
    region_limit { gpu = 1 }
  }
  limit {
    region = "global"
    region_limit { gpu = 2 }
  }
}`, wantErr: `region "global" has another limit`},
		{name: "both forms", file: "q.hcl", src: `name = "a"
quota "b" {}`, wantErr: "use one form"},
		{name: "no quota", file: "q.hcl", src: `description = "x"`, wantErr: "no quota"},
		{name: "bad name", file: "q.hcl", src: `quota "no spaces" {
  limit {
    region = "global"
    region_limit { gpu = 1 }
  }
}`, wantErr: "letters, digits or dashes"},
		{name: "json with a nomad-only field", file: "q.json", src: `{"Name": "q", "Limits": [{"Region": "global", "RegionLimit": {"Cores": 2}}]}`,
			wantErr: `unknown field "Cores"`},
		{name: "json nil limit", file: "q.json", src: `{"Name": "q", "Limits": [null]}`, wantErr: "missing"},
		{name: "hcl syntax error", file: "q.hcl", src: `quota "q" {`, wantErr: "q.hcl:1,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseQuotaSpec(tt.file, []byte(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(strings.Join(quotaErrorLines(err), "\n"), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v (limits %+v), want %+v", got, got.Limits, tt.want)
			}
		})
	}
}
