package services

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/droverhq/drover/structs"
)

// Clock is the time source of the check loops; tests may substitute one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Restarter restarts a task of the allocation (the alloc runner's
// RestartTask, which records a "Restart Signaled" task event with the
// reason).
type Restarter interface {
	RestartTask(task, reason string) error
}

// CheckResult is the latest result of one check of an allocation
// (Nomad's client allocation checks shape).
type CheckResult struct {
	ID        string
	Check     string
	Group     string
	Service   string
	Task      string `json:",omitempty"`
	Mode      string // "healthiness"
	Status    string
	Output    string
	Timestamp int64 // unix seconds
}

// checkRunner runs one check every interval until its context ends, and
// restarts its task per check_restart.
type checkRunner struct {
	check   *structs.ServiceCheck
	service string
	id      string
	at      target
	exec    Execer
	restart Restarter
	clock   Clock
	http    *http.Client
	logger  hclog.Logger

	mu        sync.Mutex
	result    CheckResult
	successes int // consecutive
	failures  int // consecutive, for failures_before_critical
	unhealthy int // consecutive, for check_restart
	graceEnd  time.Time
	// started, when set, returns when the task last started or
	// restarted (zero if unknown): check_restart's grace runs from there.
	started func(task string) time.Time
}

func newCheckRunner(id, service string, c *structs.ServiceCheck, at target, ex Execer, r Restarter, clock Clock, logger hclog.Logger) *checkRunner {
	cr := &checkRunner{
		check: c, service: service, id: id, at: at, exec: ex, restart: r, clock: clock,
		http:   checkHTTPClient(c.TLSSkipVerify),
		logger: logger,
		result: CheckResult{ID: id, Check: c.Name, Service: service, Task: c.TaskName, Mode: "healthiness", Status: StatusPending},
	}
	if cr.logger == nil {
		cr.logger = hclog.NewNullLogger()
	}
	if c.CheckRestart != nil {
		cr.graceEnd = clock.Now().Add(c.CheckRestart.Grace)
	}
	return cr
}

// run checks at once, then every interval, until ctx ends. The interval
// is validated at submit; it is bounded here too, so that a check that
// reached the client some other way never spins.
func (cr *checkRunner) run(ctx context.Context) {
	interval := max(cr.check.Interval, structs.MinCheckInterval)
	for {
		cr.once(ctx)
		select {
		case <-ctx.Done():
			return
		case <-cr.clock.After(interval):
		}
	}
}

// once runs the check one time and records its result.
func (cr *checkRunner) once(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, cr.check.Timeout)
	status, out := runCheck(cctx, cr.check, cr.at, cr.exec, cr.http)
	cancel()
	if ctx.Err() != nil {
		return // stopping: not a result
	}
	if restart, reason := cr.record(status, out); restart {
		cr.logger.Info("restarting task: check unhealthy", "check", cr.check.Name, "task", cr.check.TaskName)
		if err := cr.restart.RestartTask(cr.check.TaskName, reason); err != nil {
			cr.logger.Warn("check_restart", "check", cr.check.Name, "task", cr.check.TaskName, "error", err)
		}
	}
}

// record applies success_before_passing and failures_before_critical to
// a run's status, keeps the result, and reports whether check_restart
// asks for a restart now.
func (cr *checkRunner) record(status, out string) (bool, string) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	now := cr.clock.Now()
	if status == StatusPassing {
		cr.successes, cr.failures = cr.successes+1, 0
		if cr.successes < cr.check.SuccessBeforePassing && cr.result.Status != StatusPassing {
			status = cr.result.Status
		}
	} else {
		cr.successes, cr.failures = 0, cr.failures+1
		if status == StatusCritical && cr.failures < cr.check.FailuresBeforeCritical {
			status = cr.result.Status
		}
	}
	cr.result.Status, cr.result.Output, cr.result.Timestamp = status, out, now.Unix()
	return cr.countUnhealthy(status, now)
}

// countUnhealthy counts consecutive unhealthy results after the grace
// period; at the limit it resets and asks for a restart (the grace
// period starts again).
func (cr *checkRunner) countUnhealthy(status string, now time.Time) (bool, string) {
	rp := cr.check.CheckRestart
	if rp == nil || rp.Limit == 0 || cr.restart == nil || cr.check.TaskName == "" {
		return false, ""
	}
	healthy := status == StatusPassing || status == StatusPending || (status == StatusWarning && rp.IgnoreWarnings)
	if !healthy && cr.started != nil {
		// A task (re)started by its restart policy gets its grace too.
		if s := cr.started(cr.check.TaskName); !s.IsZero() && s.Add(rp.Grace).After(cr.graceEnd) {
			cr.graceEnd = s.Add(rp.Grace)
		}
	}
	if healthy || now.Before(cr.graceEnd) {
		cr.unhealthy = 0
		return false, ""
	}
	cr.unhealthy++
	if cr.unhealthy < rp.Limit {
		return false, ""
	}
	cr.unhealthy = 0
	cr.graceEnd = now.Add(rp.Grace)
	return true, fmt.Sprintf("healthcheck: check %q unhealthy", cr.check.Name)
}

// latest returns the check's latest result.
func (cr *checkRunner) latest() CheckResult {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	return cr.result
}

// checkHTTPClient is an http check's client: redirects are answers, not
// followed; keep-alives off, so that a check opens a connection as a
// client would; certificates verified unless tls_skip_verify.
func checkHTTPClient(skipVerify bool) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	if skipVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the job asked for it
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
