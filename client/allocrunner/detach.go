package allocrunner

// Detach stops the runner without stopping its tasks, for a client that
// leaves them running for the next client on its data dir
// (LeaveTasksRunning). It first waits until no task is between its
// driver's start and the saving of its handle, so that every task left
// running can be found again. After it returns nothing more is saved to
// the store or reported, no task starts or restarts, and the runner's
// goroutines end (WaitCh) without stopping, destroying or forgetting the
// running tasks. Detach after the tasks are dead changes nothing.
func (ar *AllocRunner) Detach() {
	ar.detachOnce.Do(func() {
		ar.startMu.Lock()
		defer ar.startMu.Unlock()
		ar.mu.Lock()
		ar.detached = true
		ar.mu.Unlock()
		close(ar.detachCh)
	})
}

func (ar *AllocRunner) isDetached() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.detached
}
