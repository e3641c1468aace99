package drivers

import (
	"errors"
	"syscall"
	"testing"
)

func TestParseSignal(t *testing.T) {
	tests := []struct {
		name    string
		want    syscall.Signal
		wantErr bool
	}{
		{"", syscall.SIGTERM, false},
		{"SIGTERM", syscall.SIGTERM, false},
		{"INT", syscall.SIGINT, false},
		{"sigusr1", syscall.SIGUSR1, false},
		{" SIGKILL ", syscall.SIGKILL, false},
		{"SIGNOPE", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSignal(tt.name)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSignal(%q) error = %v, want error %v", tt.name, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v is not ErrInvalidConfig", err)
			}
			if got != tt.want {
				t.Errorf("ParseSignal(%q) = %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestExitResult(t *testing.T) {
	tests := []struct {
		name string
		res  ExitResult
		ok   bool
		str  string
	}{
		{"zero", ExitResult{}, true, "exit code 0"},
		{"code", ExitResult{ExitCode: 3}, false, "exit code 3"},
		{"signal", ExitResult{ExitCode: 137, Signal: 9}, false, "exit code 137, signal 9 (killed)"},
		{"lost", ExitResult{Err: errors.New("gone")}, false, "exit unknown: gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.res.Successful(); got != tt.ok {
				t.Errorf("Successful() = %v, want %v", got, tt.ok)
			}
			if got := tt.res.String(); got != tt.str {
				t.Errorf("String() = %q, want %q", got, tt.str)
			}
		})
	}
}

func TestEnvListSorted(t *testing.T) {
	c := &TaskConfig{Env: map[string]string{"B": "2", "A": "1", "C": "x=y"}}
	got := c.EnvList()
	want := []string{"A=1", "B=2", "C=x=y"}
	if len(got) != len(want) {
		t.Fatalf("EnvList() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("EnvList()[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestExecOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		opts    *ExecOptions
		wantErr bool
	}{
		{"nil", nil, true},
		{"no command", &ExecOptions{}, true},
		{"empty argv0", &ExecOptions{Command: []string{""}}, true},
		{"command", &ExecOptions{Command: []string{"sh"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.Validate()
			if (err != nil) != tt.wantErr || (err != nil && !errors.Is(err, ErrInvalidConfig)) {
				t.Errorf("Validate() = %v, want an ErrInvalidConfig error: %v", err, tt.wantErr)
			}
		})
	}
}
