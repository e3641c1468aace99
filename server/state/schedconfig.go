package state

import (
	"fmt"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// TableSchedulerConfig holds at most one row: the scheduler configuration
// the operator set.
const TableSchedulerConfig = "scheduler_config"

// schedulerConfigTable indexes its single row under true.
func schedulerConfigTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableSchedulerConfig, Indexes: map[string]*memdb.IndexSchema{
		indexID: {
			Name:         indexID,
			Unique:       true,
			AllowMissing: true,
			Indexer:      &memdb.ConditionalIndex{Conditional: func(any) (bool, error) { return true, nil }},
		},
	}}
}

// SchedulerConfig returns the scheduler configuration: the one the
// operator set, else structs.DefaultSchedulerConfiguration (with
// ModifyIndex 0). The scheduler reads it through this method.
func (s *StateStore) SchedulerConfig() (*structs.SchedulerConfiguration, error) {
	return s.SchedulerConfigWatch(nil)
}

// SchedulerConfigWatch is SchedulerConfig for blocking queries: it adds
// the configuration's watch channel to ws (which may be nil).
func (s *StateStore) SchedulerConfigWatch(ws memdb.WatchSet) (*structs.SchedulerConfiguration, error) {
	cfg, err := first[*structs.SchedulerConfiguration](ws, s.db.Txn(false), TableSchedulerConfig, indexID, true)
	if err != nil || cfg != nil {
		return cfg, err
	}
	return structs.DefaultSchedulerConfiguration(), nil
}

// SetSchedulerConfig stores a canonicalized copy of cfg at index. An
// invalid configuration is an error wrapping structs.ErrInvalid.
func (s *StateStore) SetSchedulerConfig(index uint64, cfg *structs.SchedulerConfiguration) error {
	return s.write(func(txn *memdb.Txn) error {
		_, err := setSchedulerConfigTxn(txn, index, cfg, false)
		return err
	})
}

// SchedulerConfigCAS stores cfg at index only if the stored
// configuration's ModifyIndex is still cfg.ModifyIndex (0: none is
// stored yet), and reports whether it did.
func (s *StateStore) SchedulerConfigCAS(index uint64, cfg *structs.SchedulerConfiguration) (bool, error) {
	var applied bool
	err := s.write(func(txn *memdb.Txn) error {
		var err error
		applied, err = setSchedulerConfigTxn(txn, index, cfg, true)
		return err
	})
	return applied, err
}

func setSchedulerConfigTxn(txn *memdb.Txn, index uint64, cfg *structs.SchedulerConfiguration, cas bool) (bool, error) {
	if cfg == nil {
		return false, fmt.Errorf("set scheduler configuration: missing configuration: %w", structs.ErrInvalid)
	}
	if err := cfg.Validate(); err != nil {
		return false, fmt.Errorf("set scheduler configuration: %w", err)
	}
	existing, err := first[*structs.SchedulerConfiguration](nil, txn, TableSchedulerConfig, indexID, true)
	if err != nil {
		return false, err
	}
	var current uint64
	if existing != nil {
		current = existing.ModifyIndex
	}
	if cas && cfg.ModifyIndex != current {
		return false, nil
	}
	c := cfg.Copy()
	c.Canonicalize()
	c.CreateIndex, c.ModifyIndex = index, index
	if existing != nil {
		c.CreateIndex = existing.CreateIndex
	}
	if err := txn.Insert(TableSchedulerConfig, c); err != nil {
		return false, fmt.Errorf("set scheduler configuration: %w", err)
	}
	return true, setIndex(txn, TableSchedulerConfig, index)
}

// SchedulerConfigRestore inserts the scheduler configuration as it is.
func (r *StateRestore) SchedulerConfigRestore(cfg *structs.SchedulerConfiguration) error {
	return r.insert(TableSchedulerConfig, "scheduler configuration", cfg)
}
