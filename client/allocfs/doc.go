// Package allocfs is what an allocation's directory looks like to a
// user: list and stat its files, read them at an offset, follow a file
// as frames, and stream a task's log across its rotated files as one
// stream. The client serves the fs and logs operations (Nomad's
// /v1/client/fs/ls, stat, readat, cat, stream and logs) from here,
// whatever transport carries them.
//
// It owns path resolution inside an allocation directory: every access
// goes through an os.Root opened on that directory, so "..", absolute
// paths and symbolic links can never reach a file outside it (a link
// that points outside is refused, not followed). It owns the framing
// (structs.StreamFrame, Nomad's shape: at most 64 KiB per frame, File
// relative to the allocation directory, Offset in that file just after
// the frame's data, empty frames as heartbeats).
//
// It must not know about transports, ACLs, allocations' states or the
// alloc runner: the caller resolves the allocation to its directory,
// checks permissions, says whether a task is dead (a func), and carries
// the frames. It never writes to the directory and never holds a whole
// file in memory.
package allocfs
