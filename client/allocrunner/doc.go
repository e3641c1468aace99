// Package allocrunner runs one allocation on a client: it lays out the
// allocation's directories, runs one task runner per task through the
// task's driver, applies the group's restart policy, records task states
// and events, derives the allocation's client status, and reports every
// change through a callback. Before a task starts it checks the task's
// user against the client's UserPolicy (userpolicy.go); the shared data
// and tmp dirs are writable by task users, the logs dir only by the agent.
//
// It owns the lifecycle of the allocation's tasks and nothing else: it
// never talks to servers (the client batches its updates), never picks
// resources (the scheduler did), and never deletes the allocation's
// directory (the logs must stay readable). See README.md for the flow.
package allocrunner
