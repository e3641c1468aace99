package command

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAutocompleteInstall: -autocomplete-install writes the completion
// line into $HOME's .bashrc and .zshrc once, keeping what they held;
// -autocomplete-uninstall takes it out again.
func TestAutocompleteInstall(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	bashrc, zshrc := filepath.Join(home, ".bashrc"), filepath.Join(home, ".zshrc")
	if err := os.WriteFile(bashrc, []byte("export PS1='$ '"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(zshrc, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	code, out, stderr := run(t, "", "-autocomplete-install")
	if code != 0 || !strings.Contains(out, bashrc) {
		t.Fatalf("install: exit %d, out %q, err %q", code, out, stderr)
	}
	if got, want := read(bashrc), "export PS1='$ '\ncomplete -C "+bin+" drover\n"; got != want {
		t.Errorf(".bashrc = %q, want %q", got, want)
	}
	if got := read(zshrc); !strings.Contains(got, "bashcompinit\ncomplete -o nospace -C "+bin+" drover\n") {
		t.Errorf(".zshrc = %q, want bashcompinit and the complete line", got)
	}

	if code, out, _ := run(t, "", "--autocomplete-install"); code != 0 || !strings.Contains(out, "already installed") {
		t.Errorf("second install: exit %d, out %q", code, out)
	}
	if n := strings.Count(read(bashrc), "complete -C"); n != 1 {
		t.Errorf(".bashrc has %d complete lines, want 1", n)
	}

	if code, _, stderr := run(t, "", "-autocomplete-uninstall"); code != 0 {
		t.Fatalf("uninstall: exit %d, err %q", code, stderr)
	}
	if got := read(bashrc); got != "export PS1='$ '\n" {
		t.Errorf(".bashrc after uninstall = %q", got)
	}
}

func TestAutocompleteInstallWithoutRCFile(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	if code, _, stderr := run(t, "", "-autocomplete-install"); code != 1 || !strings.Contains(stderr, "no shell rc file") {
		t.Errorf("exit %d, stderr %q; want 1 and no rc file", code, stderr)
	}
}
