// Package taskuser resolves the user a host-process task runs as (the
// exec and raw_exec drivers): a name or numeric ID to a uid, a primary
// gid and supplementary groups, the credential a process is started
// with, and whether that user can reach a directory.
//
// nobody is the default: a task that names no user never runs as the
// agent's user (root) unless the agent is not root and so cannot switch.
// It reads the user database (os/user) and file modes; it starts
// nothing, decides no policy (the client's user.denylist is checked by
// the client) and must not import a driver.
package taskuser

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/droverhq/drover/drivers"
)

// Default is the user a task runs as when it names none.
const Default = "nobody"

// ErrCannotSwitch: the agent is not root, so it runs every task as its
// own user and cannot run one as the user it names.
var ErrCannotSwitch = errors.New("taskuser: the agent cannot switch users")

// User is a resolved task user.
type User struct {
	Name   string
	UID    uint32
	GID    uint32
	Groups []uint32 // supplementary groups, the primary one excluded
}

// nobodyID is nobody's uid and gid where the user database has no
// entry for it (a FROM scratch container): the kernel's overflow ID.
const nobodyID = 65534

// Lookup resolves name, a user name or a numeric uid ("" is Default). A
// numeric uid with no entry in the user database gets the gid of the
// same number and no supplementary groups; so does nobody, as 65534.
func Lookup(name string) (*User, error) {
	if name == "" {
		name = Default
	}
	u, err := user.Lookup(name)
	if err != nil {
		if name == Default {
			return &User{Name: Default, UID: nobodyID, GID: nobodyID}, nil
		}
		id, perr := strconv.ParseUint(name, 10, 32)
		if perr != nil {
			return nil, fmt.Errorf("user %q: %w", name, err)
		}
		if u, err = user.LookupId(name); err != nil {
			return &User{Name: name, UID: uint32(id), GID: uint32(id)}, nil
		}
	}
	return fromOS(u)
}

func fromOS(u *user.User) (*User, error) {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user %q: non-numeric uid or gid: %w", u.Username, err)
	}
	out := &User{Name: u.Username, UID: uint32(uid), GID: uint32(gid)}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("user %q: groups: %w", u.Username, err)
	}
	for _, s := range ids {
		g, err := strconv.ParseUint(s, 10, 32)
		if err == nil && uint32(g) != out.GID && !slices.Contains(out.Groups, uint32(g)) {
			out.Groups = append(out.Groups, uint32(g))
		}
	}
	slices.Sort(out.Groups)
	return out, nil
}

// ForTask resolves the user a task runs as. As root that is name, or
// Default when name is "". An agent that is not root cannot switch: a
// task naming no user runs as the agent's own user, and one naming
// another user fails with ErrCannotSwitch.
func ForTask(name string) (*User, error) {
	euid := os.Geteuid()
	if euid == 0 {
		return Lookup(name)
	}
	if name == "" {
		self, err := user.LookupId(strconv.Itoa(euid))
		if err != nil {
			return &User{Name: strconv.Itoa(euid), UID: uint32(euid), GID: uint32(os.Getegid())}, nil
		}
		return fromOS(self)
	}
	u, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	if u.UID != uint32(euid) {
		return nil, fmt.Errorf("%w: it runs as uid %d, not root, so it cannot run a task as user %q", ErrCannotSwitch, euid, name)
	}
	return u, nil
}

// Prepare resolves the user a driver runs the task as (ForTask), checks
// with reach that the user can get to the task dir (CheckReach; a driver
// that gives the task its own view of the filesystem need not) and makes
// the task dir the user's. Errors wrap drivers.ErrInvalidConfig for a
// user the host does not know and drivers.ErrDisabled for one the agent
// cannot switch to.
func Prepare(cfg *drivers.TaskConfig, reach bool) (*User, error) {
	u, err := ForTask(cfg.User)
	switch {
	case errors.Is(err, ErrCannotSwitch):
		return nil, fmt.Errorf("%w: %v", drivers.ErrDisabled, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %v", drivers.ErrInvalidConfig, err)
	}
	if cfg.TaskDir == "" || u.Credential() == nil {
		return u, nil
	}
	if reach {
		if err := u.CheckReach(cfg.TaskDir); err != nil {
			return nil, fmt.Errorf("task dir: %w", err)
		}
	}
	if err := os.Lchown(cfg.TaskDir, int(u.UID), int(u.GID)); err != nil {
		return nil, fmt.Errorf("task dir: %w", err)
	}
	return u, nil
}

// Credential is what a process is started with to run as u; nil when u
// is the calling process's own user, so there is nothing to switch.
func (u *User) Credential() *syscall.Credential {
	if u.UID == uint32(os.Geteuid()) && u.GID == uint32(os.Getegid()) && u.UID != 0 {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: append([]uint32{}, u.Groups...)}
}

// String encodes u as "name:uid:gid:g1,g2" for a child process of the
// driver (an executor or a task init); Parse reads it back.
func (u *User) String() string {
	gs := make([]string, len(u.Groups))
	for i, g := range u.Groups {
		gs[i] = strconv.FormatUint(uint64(g), 10)
	}
	return fmt.Sprintf("%s:%d:%d:%s", u.Name, u.UID, u.GID, strings.Join(gs, ","))
}

// Parse reads what String wrote.
func Parse(s string) (*User, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 4 {
		return nil, fmt.Errorf("task user %q: want name:uid:gid:groups", s)
	}
	u := &User{Name: parts[0]}
	uid, err1 := strconv.ParseUint(parts[1], 10, 32)
	gid, err2 := strconv.ParseUint(parts[2], 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("task user %q: %w", s, err)
	}
	u.UID, u.GID = uint32(uid), uint32(gid)
	if parts[3] != "" {
		for _, f := range strings.Split(parts[3], ",") {
			g, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("task user %q: %w", s, err)
			}
			u.Groups = append(u.Groups, uint32(g))
		}
	}
	return u, nil
}

// CheckReach checks, from the file modes, that u can search every
// directory from / down to dir (dir included), so a process of u can
// chdir there and open what it holds by absolute path. ACLs are not
// read. The error names the first directory in the way.
func (u *User) CheckReach(dir string) error {
	if u.UID == 0 {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	p := "/"
	for _, part := range append([]string{""}, strings.Split(strings.TrimPrefix(abs, "/"), "/")...) {
		p = filepath.Join(p, part)
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if !u.may(&st, 0o1) {
			return fmt.Errorf("%s (mode %04o, owner %d:%d) is not searchable by user %q (uid %d): "+
				"make the client's data_dir and its parents searchable (chmod o+x)",
				p, st.Mode&0o7777, st.Uid, st.Gid, u.Name, u.UID)
		}
	}
	return nil
}

// may reports whether u has the permission bit (1 x, 2 w, 4 r) on a
// file with stat st, by owner, group and other bits.
func (u *User) may(st *syscall.Stat_t, bit uint32) bool {
	mode := uint32(st.Mode) // uint16 on some systems
	switch {
	case st.Uid == u.UID:
		return mode&(bit<<6) != 0
	case st.Gid == u.GID || slices.Contains(u.Groups, st.Gid):
		return mode&(bit<<3) != 0
	default:
		return mode&bit != 0
	}
}
