package state

import (
	"fmt"
	"slices"

	memdb "github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/structs"
)

// Derived tables of quota usage, kept like TableUsage: never written by
// the FSM directly, updated in the same transaction as the allocations
// (through updateUsage), and rebuilt by a restore.
//
// TableQuotaCharges holds one row per non-terminal placed allocation:
// what it counts against its namespace's quota, fixed when it started to
// count (structs.AllocQuotaResources with its node as it was then). When
// the allocation stops counting, exactly that is taken back, so a node
// that changed or left meanwhile cannot skew the sums.
//
// TableNamespaceUsage holds one row per namespace with something
// charged: the sum of its charges. A quota's usage is the sum of the rows
// of the namespaces that name it, one lookup each.
const (
	TableQuotaCharges   = "quota_charges"
	TableNamespaceUsage = "namespace_usage"
)

// namespaceUsage is the sum of a namespace's charges. Rows are immutable
// once inserted.
type namespaceUsage struct {
	Namespace string
	Used      structs.QuotaResources
}

func quotaChargesTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableQuotaCharges, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("AllocID"),
	}}
}

func namespaceUsageTable() *memdb.TableSchema {
	return &memdb.TableSchema{Name: TableNamespaceUsage, Indexes: map[string]*memdb.IndexSchema{
		indexID: idIndex("Namespace"),
	}}
}

// chargeQuota moves the quota charge of one allocation from old (nil: a
// new allocation) to cur. Only a change in whether it counts (placed and
// not terminal) changes anything: a live allocation keeps its resources
// (in-place updates keep them), so its charge stays as it was made. The
// namespaces' sums change in the transaction's deltas, written once by
// flushQuota.
func (tx *Txn) chargeQuota(old, cur *structs.Allocation) error {
	before, after := countsForUsage(old), countsForUsage(cur)
	switch {
	case before == after:
		return nil
	case after:
		return tx.addCharge(cur)
	default:
		return tx.dropCharge(old.ID)
	}
}

// addCharge charges a, which just started to count.
func (tx *Txn) addCharge(a *structs.Allocation) error {
	var node *structs.Node
	if gpus, compute := a.GPUShape(); gpus > 0 && compute == structs.WholeGPU {
		// Whole GPUs count their memory, which only the node knows.
		if u, ok := tx.usage[a.NodeID]; ok {
			node = u.Node
		} else {
			n, err := first[*structs.Node](nil, tx.txn, TableNodes, indexID, a.NodeID)
			if err != nil {
				return err
			}
			node = n
		}
	}
	c := &structs.QuotaCharge{AllocID: a.ID, Namespace: namespaceOf(a.Namespace), Used: structs.AllocQuotaResources(a, node)}
	if err := tx.txn.Insert(TableQuotaCharges, c); err != nil {
		return fmt.Errorf("charge quota of alloc %q: %w", a.ID, err)
	}
	tx.addQuotaDelta(c.Namespace, c.Used, 1)
	return nil
}

// dropCharge takes back the charge of the allocation with id, if any.
func (tx *Txn) dropCharge(id string) error {
	c, err := first[*structs.QuotaCharge](nil, tx.txn, TableQuotaCharges, indexID, id)
	if err != nil || c == nil {
		return err
	}
	if err := tx.txn.Delete(TableQuotaCharges, c); err != nil {
		return fmt.Errorf("release quota of alloc %q: %w", id, err)
	}
	tx.addQuotaDelta(c.Namespace, c.Used, -1)
	return nil
}

func (tx *Txn) addQuotaDelta(namespace string, r structs.QuotaResources, sign int) {
	if tx.quota == nil {
		tx.quota = map[string]structs.QuotaResources{}
	}
	if sign > 0 {
		tx.quota[namespace] = tx.quota[namespace].Add(r)
	} else {
		tx.quota[namespace] = tx.quota[namespace].Sub(r)
	}
}

// flushQuota adds the transaction's deltas to the namespaces' usage rows,
// each row written once however many allocations changed it; a row that
// drops to nothing is removed.
func (tx *Txn) flushQuota() error {
	for namespace, delta := range tx.quota {
		if delta.IsZero() {
			continue
		}
		row, err := first[*namespaceUsage](nil, tx.txn, TableNamespaceUsage, indexID, namespace)
		if err != nil {
			return err
		}
		next := &namespaceUsage{Namespace: namespace, Used: delta}
		if row != nil {
			next.Used = row.Used.Add(delta)
		}
		switch {
		case !next.Used.IsZero():
			err = tx.txn.Insert(TableNamespaceUsage, next)
		case row != nil:
			err = tx.txn.Delete(TableNamespaceUsage, row)
		}
		if err != nil {
			return fmt.Errorf("update usage of namespace %q: %w", namespace, err)
		}
	}
	clear(tx.quota)
	return nil
}

// rebuildQuotaCharges recomputes every charge and namespace sum from the
// allocations and nodes in txn (after a restore).
func rebuildQuotaCharges(txn *memdb.Txn) error {
	for _, table := range []string{TableQuotaCharges, TableNamespaceUsage} {
		if _, err := txn.DeleteAll(table, indexID); err != nil {
			return fmt.Errorf("clear %s: %w", table, err)
		}
	}
	allocs, err := txn.Get(TableAllocs, indexID)
	if err != nil {
		return fmt.Errorf("rebuild quota charges: %w", err)
	}
	var counted []*structs.Allocation
	for raw := allocs.Next(); raw != nil; raw = allocs.Next() {
		if a := raw.(*structs.Allocation); countsForUsage(a) {
			counted = append(counted, a)
		}
	}
	tx := &Txn{txn: txn}
	for _, a := range counted {
		if err := tx.addCharge(a); err != nil {
			return err
		}
	}
	return tx.flushQuota()
}

// NamespaceUsage returns what the namespace's non-terminal allocations
// hold against quotas.
func (s *StateStore) NamespaceUsage(ws memdb.WatchSet, namespace string) (structs.QuotaResources, error) {
	row, err := first[*namespaceUsage](ws, s.db.Txn(false), TableNamespaceUsage, indexID, namespaceOf(namespace))
	if err != nil || row == nil {
		return structs.QuotaResources{}, err
	}
	return row.Used, nil
}

// QuotaUsage returns what the allocations of every namespace that names
// the quota hold together, or nil when there is no quota of that name.
func (s *StateStore) QuotaUsage(ws memdb.WatchSet, name string) (*structs.QuotaUsage, error) {
	txn := s.db.Txn(false)
	spec, err := first[*structs.QuotaSpec](ws, txn, TableQuotas, indexID, name)
	if err != nil || spec == nil {
		return nil, err
	}
	iter, err := txn.Get(TableNamespaces, indexQuota, name)
	if err != nil {
		return nil, fmt.Errorf("namespaces of quota %q: %w", name, err)
	}
	ws.Add(iter.WatchCh())
	u := &structs.QuotaUsage{Name: name}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		ns := raw.(*structs.Namespace)
		u.Namespaces = append(u.Namespaces, ns.Name)
		row, err := first[*namespaceUsage](ws, txn, TableNamespaceUsage, indexID, ns.Name)
		if err != nil {
			return nil, err
		}
		if row != nil {
			u.Used = u.Used.Add(row.Used)
		}
	}
	slices.Sort(u.Namespaces)
	return u, nil
}

// QuotaChargeOf returns what the allocation with id counts against its
// namespace's quota, or nil when it counts nothing (not placed, terminal
// or unknown).
func (s *StateStore) QuotaChargeOf(allocID string) (*structs.QuotaCharge, error) {
	return first[*structs.QuotaCharge](nil, s.db.Txn(false), TableQuotaCharges, indexID, allocID)
}
