package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"
)

// Table names. The index table is keyed by the other tables' names.
const (
	TableNodes  = "nodes"
	TableJobs   = "jobs"
	TableEvals  = "evals"
	TableAllocs = "allocs"
	TableIndex  = "index"
)

// Index names shared by the tables.
const (
	indexID   = "id"
	indexJob  = "job"
	indexNode = "node"
	indexEval = "eval"
)

// IndexEntry is a row of the index table: the Raft index at which the
// table named by Key last changed.
type IndexEntry struct {
	Key   string
	Value uint64
}

// Schema returns the go-memdb schema of the state store.
func Schema() *memdb.DBSchema {
	return &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{
		TableNodes:    nodesTable(),
		TableJobs:     jobsTable(),
		TableEvals:    evalsTable(),
		TableAllocs:   allocsTable(),
		TableUsage:    usageTable(),
		TableWorkload: workloadTable(),
		TableIndex:    indexTable(),

		// The operator's scheduler configuration (schedconfig.go).
		TableSchedulerConfig: schedulerConfigTable(),
		// Waiting gangs' reservations (reservations.go).
		TableReservations: reservationsTable(),

		// Namespaces, quotas and the quota usage derived from allocations
		// (namespaces.go, quota.go).
		TableNamespaces:     namespacesTable(),
		TableQuotas:         quotasTable(),
		TableQuotaCharges:   quotaChargesTable(),
		TableNamespaceUsage: namespaceUsageTable(),

		// Fair-share queues and their usage derived from jobs,
		// evaluations, allocations and nodes (queue.go, queue_usage.go).
		TableQueues:       queuesTable(),
		TableQueueUsage:   queueUsageTable(),
		TableQueueWaiting: queueWaitingTable(),
		TableClusterGPUs:  clusterGPUsTable(),

		// ACL policies and tokens (acl.go).
		TableACLPolicies: aclPoliciesTable(),
		TableACLTokens:   aclTokensTable(),

		// The service registry (services.go).
		TableServiceRegistrations: serviceRegistrationsTable(),
		// Periodic parents' last launches (periodic.go).
		TablePeriodicLaunch: periodicLaunchTable(),
		// Variables, sealed, and the root keys' metadata (variables.go).
		TableVariables: variablesTable(),
		TableRootKeys:  rootKeysTable(),
		// Job versions and deployments (job_versions.go, deployments.go).
		TableJobVersions: jobVersionsTable(),
		TableDeployments: deploymentsTable(),
	}}
}

func idIndex(field string) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:    indexID,
		Unique:  true,
		Indexer: &memdb.StringFieldIndex{Field: field},
	}
}

// namespacedIndex indexes Namespace then field, so that a lookup can give
// the namespace exactly and the second field as a prefix.
func namespacedIndex(name, field string, unique bool) *memdb.IndexSchema {
	return &memdb.IndexSchema{
		Name:         name,
		Unique:       unique,
		AllowMissing: !unique,
		Indexer: &memdb.CompoundIndex{Indexes: []memdb.Indexer{
			&memdb.StringFieldIndex{Field: "Namespace"},
			&memdb.StringFieldIndex{Field: field},
		}},
	}
}

func nodesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableNodes, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("ID"),
	}}
}

func jobsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableJobs, Indexes: map[string]*memdb.IndexSchema{
		indexID: namespacedIndex(indexID, "ID", true),
	}}
}

func evalsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableEvals, Indexes: map[string]*memdb.IndexSchema{
		indexID:  idIndex("ID"),
		indexJob: namespacedIndex(indexJob, "JobID", false),
	}}
}

func allocsTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableAllocs, Indexes: map[string]*memdb.IndexSchema{
		indexID:  idIndex("ID"),
		indexJob: namespacedIndex(indexJob, "JobID", false),
		indexNode: {
			Name:         indexNode,
			AllowMissing: true,
			Indexer:      &memdb.StringFieldIndex{Field: "NodeID"},
		},
		indexEval: {
			Name:         indexEval,
			AllowMissing: true,
			Indexer:      &memdb.StringFieldIndex{Field: "EvalID"},
		},
	}}
}

func indexTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableIndex, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("Key"),
	}}
}

// setIndex records that table changed at index. The index never moves
// backwards.
func setIndex(txn *memdb.Txn, table string, index uint64) error {
	raw, err := txn.First(TableIndex, indexID, table)
	if err != nil {
		return fmt.Errorf("read index of %s: %w", table, err)
	}
	if raw != nil && raw.(*IndexEntry).Value >= index {
		return nil
	}
	if err := txn.Insert(TableIndex, &IndexEntry{Key: table, Value: index}); err != nil {
		return fmt.Errorf("write index of %s: %w", table, err)
	}
	return nil
}
