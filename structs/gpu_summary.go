package structs

// GPUSummary is the cluster's GPUs at a glance (GET /v1/gpus): counts by
// model and per node, so the UI draws the overview and its heat map from
// one request however many nodes there are.
type GPUSummary struct {
	Total, Allocated, Free, Unhealthy int
	Models                            []*GPUModelSummary
	Nodes                             []*GPUNodeSummary
}

// GPUModelSummary counts one model's GPUs across the cluster.
type GPUModelSummary struct {
	Vendor, Type, Model string
	MemoryBytes         uint64
	Total, Allocated    int
	Free, Unhealthy     int
}

// GPUNodeSummary counts one node's GPUs.
type GPUNodeSummary struct {
	ID, Name, Datacenter, Status string
	GPUs, Allocated, Unhealthy   int
}
