package structs

import "time"

// AllocFileInfo describes a file or directory of an allocation's
// directory: Nomad's api.AllocFileInfo, field for field (the JSON keys
// are the Go field names).
type AllocFileInfo struct {
	// Name is the base name of the file.
	Name  string
	IsDir bool
	Size  int64
	// FileMode is the mode in fs.FileMode.String form ("-rw-r--r--").
	FileMode string
	ModTime  time.Time
	// ContentType is sniffed from the file's first 512 bytes; empty for
	// directories.
	ContentType string
}

// Events a StreamFrame can carry (Nomad's values).
const (
	// FileEventDeleted: the streamed file was removed (or replaced); the
	// stream ends after this frame.
	FileEventDeleted = "file deleted"
	// FileEventTruncated: the streamed file shrank; the stream goes on
	// from its start.
	FileEventTruncated = "file truncated"
)

// StreamFrame is one frame of a streamed file or task log: Nomad's
// api.StreamFrame, tags included, so that a stream of these encoded as
// concatenated JSON is what Nomad's AllocFS().Logs and Stream decode.
//
// File is the path, relative to the allocation's directory, of the file
// the data came from ("alloc/logs/web.stdout.0"); Offset is the byte
// offset in that file just after Data. A frame with no field set is a
// heartbeat, sent while a followed file is idle so that the connection
// is kept.
type StreamFrame struct {
	Offset    int64  `json:",omitempty"`
	Data      []byte `json:",omitempty"`
	File      string `json:",omitempty"`
	FileEvent string `json:",omitempty"`
}

// IsHeartbeat reports whether the frame is a heartbeat (no field set), as
// Nomad's api.StreamFrame.IsHeartbeat does.
func (f *StreamFrame) IsHeartbeat() bool {
	return len(f.Data) == 0 && f.FileEvent == "" && f.File == "" && f.Offset == 0
}
