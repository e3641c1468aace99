package structs

// LogConfig bounds a task's stdout and stderr files: at most MaxFiles
// files of MaxFileSizeMB each per stream, oldest removed first (Nomad's
// `logs { max_files max_file_size }`).
type LogConfig struct {
	MaxFiles      int
	MaxFileSizeMB int
	// Disabled: the client keeps no logs of the task (its output is
	// dropped). Nomad's `logs { disabled = true }`.
	Disabled bool `json:",omitempty"`
}

// DefaultLogConfig is Nomad's default: 10 files of 10 MB per stream.
func DefaultLogConfig() *LogConfig { return &LogConfig{MaxFiles: 10, MaxFileSizeMB: 10} }
