package main

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/droverhq/drover"

// layerOf places a package in the one-way dependency order of the design:
//
//	structs, audit <- jobspec, boltfile, drivers/*, api, ui, acl, tlsconf, telemetry <- server/*, client/* <- command/agent <- command <- main
//
// A package may import packages of a lower layer, and packages of its own
// family (server/* from server/*, ...), nothing else. audit is a leaf
// beside structs: it imports nothing from drover.
func layerOf(pkg string) (layer int, family string) {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	top, _, _ := strings.Cut(rel, "/")
	switch {
	case rel == "":
		return 6, "main"
	case rel == "structs":
		return 0, "structs"
	case rel == "audit":
		return 0, "audit"
	case top == "jobspec", top == "boltfile", top == "drivers", top == "api", top == "ui", top == "acl", top == "tlsconf", top == "telemetry":
		return 1, top
	case top == "server", top == "client":
		return 2, top
	case rel == "command/agent":
		return 3, "command/agent"
	case rel == "command":
		return 4, "command"
	case top == "e2e", top == "scripts":
		return 5, top
	}
	return -1, ""
}

type pkgInfo struct {
	path, doc string
	imports   []string
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	format := `{{.ImportPath}}|{{.Doc}}|{{join .Imports " "}}`
	out, err := exec.Command("go", "list", "-f", format, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkgInfo
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		if len(parts) != 3 {
			t.Fatalf("go list line %q: want 3 fields", sc.Text())
		}
		pkgs = append(pkgs, pkgInfo{path: parts[0], doc: parts[1], imports: strings.Fields(parts[2])})
	}
	return pkgs
}

// forbidden are imports the layers allow but the design does not: the
// HTTP layer reaches the cluster only through server endpoints (the one
// road), never the state store, the scheduler or a client's internals.
var forbidden = map[string][]string{
	"command/agent": {"server/state", "server/fsm", "server/broker", "server/plan", "server/scheduler", "client/allocrunner", "client/allocfs", "client/state"},
}

func TestDependencyDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.path, module), "/")
		for _, imp := range p.imports {
			for _, f := range forbidden[rel] {
				if imp == module+"/"+f || strings.HasPrefix(imp, module+"/"+f+"/") {
					t.Errorf("%s imports %s: the HTTP layer goes through server endpoints (one road)", p.path, imp)
				}
			}
		}
		layer, family := layerOf(p.path)
		if layer < 0 {
			t.Errorf("%s: package is not in the design's layout; add it to layerOf", p.path)
			continue
		}
		for _, imp := range p.imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			il, ifam := layerOf(imp)
			if il < layer || ifam == family {
				continue
			}
			t.Errorf("%s (layer %d) imports %s (layer %d): imports must flow toward structs", p.path, layer, imp, il)
		}
	}
}

func TestDependencyRules(t *testing.T) {
	tests := []struct {
		pkg, imp string
		allowed  bool
	}{
		{"server/state", "structs", true},
		{"server/scheduler", "server/state", true},
		{"server", "client", false},
		{"client", "server/state", false},
		{"client/allocrunner", "drivers", true},
		{"api", "jobspec", false},
		{"command/agent", "command", false},
		{"command", "command/agent", true},
		{"structs", "jobspec", false},
		{"audit", "structs", false},
		{"command/agent", "audit", true},
		{"acl", "structs", true},
		{"acl", "server", false},
		{"acl", "command/agent", false},
		{"server", "acl", true},
		{"command/agent", "acl", true},
		{"api", "acl", false},
		{"server", "tlsconf", true},
		{"tlsconf", "server", false},
	}
	for _, tt := range tests {
		t.Run(tt.pkg+"->"+tt.imp, func(t *testing.T) {
			l, f := layerOf(module + "/" + tt.pkg)
			il, ifam := layerOf(module + "/" + tt.imp)
			got := il < l || ifam == f
			if got != tt.allowed {
				t.Errorf("allowed = %v, want %v", got, tt.allowed)
			}
		})
	}
}

// TestPackageDocs requires a doc comment saying what each package owns.
func TestPackageDocs(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.doc) == "" {
			t.Errorf("%s: missing package doc comment", p.path)
		}
	}
}
