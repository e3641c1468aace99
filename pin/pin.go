// Package pin keeps the pinned dependencies in go.mod while the packages
// that use them are being written. Delete it once every one is imported.
package pin

import (
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	_ "github.com/google/uuid"
	_ "github.com/hashicorp/cli"
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/hashicorp/go-memdb"
	_ "github.com/hashicorp/go-metrics"
	_ "github.com/hashicorp/go-msgpack/v2/codec"
	_ "github.com/hashicorp/hcl/v2"
	_ "github.com/hashicorp/hcl/v2/hclsyntax"
	_ "github.com/hashicorp/hcl/v2/gohcl"
	_ "github.com/hashicorp/nomad/api"
	_ "github.com/hashicorp/raft"
	_ "github.com/hashicorp/raft-boltdb/v2"
	_ "github.com/hashicorp/yamux"
	_ "github.com/zclconf/go-cty/cty"
	_ "go.etcd.io/bbolt"
)
