//go:build linux || darwin

package client

import "golang.org/x/sys/unix"

// diskUsedPercent returns how full the file system holding path is, in
// percent of its blocks, as df counts them.
func diskUsedPercent(path string) (float64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil || st.Blocks == 0 {
		return 0, false
	}
	free := min(st.Bfree, st.Blocks) // a file system reporting more free than total is full of nothing
	used := float64(st.Blocks - free)
	avail := float64(st.Bavail)
	if used+avail == 0 {
		return 0, false
	}
	return 100 * used / (used + avail), true
}

// diskFreeMB returns the space unprivileged users may still write on the
// file system holding path, in MB (the node's disk for ephemeral disks).
func diskFreeMB(path string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil || st.Blocks == 0 {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize) >> 20, true
}
