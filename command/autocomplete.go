package command

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/posener/complete"
)

// Shell completion. Completing itself is hashicorp/cli's (Autocomplete,
// through posener/complete: the shell runs `drover` with COMP_LINE set).
// Installing is done here rather than by posener's installer, which
// finds the home directory through the user database: this one honours
// $HOME, like the shells that read the files.
const (
	flagAutocompleteInstall   = "autocomplete-install"
	flagAutocompleteUninstall = "autocomplete-uninstall"
)

// autocompleteRequest reports which of -autocomplete-install and
// -autocomplete-uninstall args holds (as the only argument).
func autocompleteRequest(args []string) (install, uninstall bool) {
	if len(args) != 1 {
		return false, false
	}
	a := "-" + strings.TrimLeft(args[0], "-")
	return a == "-"+flagAutocompleteInstall, a == "-"+flagAutocompleteUninstall
}

// completionLines are the lines each shell's rc file gets to complete
// name with bin.
func completionLines(rc, name, bin string) []string {
	if filepath.Base(rc) == ".zshrc" {
		return []string{"autoload -U +X bashcompinit && bashcompinit", fmt.Sprintf("complete -o nospace -C %s %s", bin, name)}
	}
	return []string{fmt.Sprintf("complete -C %s %s", bin, name)}
}

// rcFiles are the shells' rc files that exist in home: the first of
// bash's, and zsh's.
func rcFiles(home string) []string {
	var out []string
	for _, group := range [][]string{{".bashrc", ".bash_profile", ".bash_login", ".profile"}, {".zshrc"}} {
		for _, name := range group {
			if p := filepath.Join(home, name); fileExists(p) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// installCompletion adds (or, with remove, takes out) the completion
// lines for name to every shell rc file in $HOME, and says which.
func installCompletion(name string, remove bool) ([]string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("home directory: %w", err)
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("this program's path: %w", err)
	}
	rcs := rcFiles(home)
	if len(rcs) == 0 {
		return nil, fmt.Errorf("no shell rc file (.bashrc, .bash_profile, .profile, .zshrc) in %s", home)
	}
	var changed []string
	var errs []error
	for _, rc := range rcs {
		did, err := editRC(rc, completionLines(rc, name, bin), remove)
		if err != nil {
			errs = append(errs, err)
		}
		if did {
			changed = append(changed, rc)
		}
	}
	return changed, errors.Join(errs...)
}

// editRC appends the lines rc lacks, or removes the last of them (the
// complete command; bashcompinit may serve others), keeping the rest.
func editRC(rc string, lines []string, remove bool) (bool, error) {
	buf, err := os.ReadFile(rc)
	if err != nil {
		return false, err
	}
	have := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	completeLine := lines[len(lines)-1]
	if remove {
		kept := slices.DeleteFunc(slices.Clone(have), func(l string) bool { return l == completeLine })
		if len(kept) == len(have) {
			return false, nil
		}
		return true, os.WriteFile(rc, []byte(strings.Join(kept, "\n")+"\n"), 0o644)
	}
	if slices.Contains(have, completeLine) {
		return false, nil
	}
	var add []string
	for _, l := range lines {
		if !slices.Contains(have, l) {
			add = append(add, l)
		}
	}
	f, err := os.OpenFile(rc, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return false, err
	}
	prefix := ""
	if len(buf) > 0 && !strings.HasSuffix(string(buf), "\n") {
		prefix = "\n"
	}
	_, err = f.WriteString(prefix + strings.Join(add, "\n") + "\n")
	return true, errors.Join(err, f.Close())
}

// runAutocompleteInstall handles -autocomplete-install and
// -autocomplete-uninstall.
func runAutocompleteInstall(m Meta, remove bool) int {
	changed, err := installCompletion("drover", remove)
	for _, rc := range changed {
		if remove {
			m.Ui.Output("Removed drover's completion from " + rc)
		} else {
			m.Ui.Output("Added drover's completion to " + rc + "; open a new shell to use it")
		}
	}
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error: %s", err))
		return 1
	}
	if len(changed) == 0 {
		m.Ui.Output("Nothing to change: completion is already " + map[bool]string{false: "installed", true: "absent"}[remove])
	}
	return 0
}

// AutocompleteFlags completes the flags every client command takes.
func (m *Meta) AutocompleteFlags() complete.Flags {
	return complete.Flags{
		"-address": complete.PredictAnything, "-namespace": complete.PredictAnything, "-region": complete.PredictAnything,
		"-token": complete.PredictAnything, "-ca-cert": complete.PredictFiles("*"), "-client-cert": complete.PredictFiles("*"),
		"-client-key": complete.PredictFiles("*"), "-tls-server-name": complete.PredictAnything, "-tls-skip-verify": complete.PredictNothing,
		"-json": complete.PredictNothing, "-t": complete.PredictAnything, "-verbose": complete.PredictNothing,
	}
}

// AutocompleteArgs: a command's arguments (IDs, files) are not predicted
// yet.
func (m *Meta) AutocompleteArgs() complete.Predictor { return complete.PredictNothing }
