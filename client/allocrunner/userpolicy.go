package allocrunner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/droverhq/drover/drivers"
	"github.com/droverhq/drover/drivers/taskuser"
)

// Defaults of UserPolicy, as in Nomad's client user block, with raw_exec
// checked too: its tasks are host processes like exec's.
var (
	DefaultUserDenylist       = []string{"root", "Administrator"}
	DefaultUserCheckedDrivers = []string{"exec", "raw_exec"}
)

// UserPolicy is the client's `user` block: which users tasks of the
// checked drivers may name. A nil list takes its default; an empty one
// turns that part off. The zero value is the safe default: exec and
// raw_exec tasks may not run as root.
type UserPolicy struct {
	// Denylist names users (or numeric uids) no task may run as. A
	// user is denied by name and, where the host knows both, by uid:
	// "0" or another name for uid 0 is root too.
	Denylist []string
	// Allowlist, when not empty, is the only users a task may name. A
	// task that names none runs as the driver's default (nobody), which
	// only the denylist can refuse.
	Allowlist []string
	// CheckedDrivers are the drivers whose tasks are checked.
	CheckedDrivers []string
}

// check refuses a task whose user the policy does not allow, with an
// error wrapping drivers.ErrDisabled: no restart on this client helps.
func (p UserPolicy) check(driver, user string) error {
	checked := p.CheckedDrivers
	if checked == nil {
		checked = DefaultUserCheckedDrivers
	}
	if !slices.Contains(checked, driver) {
		return nil
	}
	deny := p.Denylist
	if deny == nil {
		deny = DefaultUserDenylist
	}
	name := user
	if name == "" {
		name = taskuser.Default
	}
	if matchUser(deny, name) {
		return fmt.Errorf("%w: user %q may not run %s tasks: it is in the client's user.denylist %q", drivers.ErrDisabled, name, driver, deny)
	}
	if user != "" && len(p.Allowlist) > 0 && !matchUser(p.Allowlist, user) {
		return fmt.Errorf("%w: user %q may not run %s tasks: it is not in the client's user.allowlist %q", drivers.ErrDisabled, user, driver, p.Allowlist)
	}
	return nil
}

// matchUser reports whether user is in list, by name or by uid where
// the host's user database resolves both. For docker's "user:group" the
// user part counts.
func matchUser(list []string, user string) bool {
	user, _, _ = strings.Cut(user, ":")
	if slices.Contains(list, user) {
		return true
	}
	u, err := taskuser.Lookup(user)
	if err != nil {
		return false
	}
	for _, entry := range list {
		if entry == u.Name {
			return true
		}
		if e, err := taskuser.Lookup(entry); err == nil && e.UID == u.UID {
			return true
		}
	}
	return false
}
