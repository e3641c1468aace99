# A team policy as a Nomad operator would write it: ML engineers own the
# ml-* namespaces, may look at prod, and must stay out of prod-secrets.

namespace "default" {
  policy = "read"
}

namespace "ml-*" {
  policy       = "write"
  capabilities = ["alloc-node-exec", "csi-register-plugin"]

  variables {
    path "ml/*" {
      capabilities = ["read", "write", "list"]
    }
    path "shared/*" {
      capabilities = ["read"]
    }
    path "ml/secret/*" {
      capabilities = ["deny"]
    }
  }
}

namespace "ml-restricted" {
  policy       = "read"
  capabilities = ["read-logs"]
}

namespace "prod*" {
  policy = "scale"
}

namespace "prod-secrets" {
  policy = "deny"
}

node {
  policy = "read"
}

agent {
  policy = "read"
}

operator {
  policy = "deny"
}

quota {
  policy = "read"
}

# Drover: the fair-share GPU queues.
queue "gpu-*" {
  policy = "write"
}

queue "gpu-reserved" {
  policy = "read"
}

# Nomad rules Drover accepts but does not enforce yet.
node_pool "gpu" {
  policy       = "read"
  capabilities = ["write"]
}

host_volume "scratch-*" {
  policy = "write"
}

plugin {
  policy = "list"
}
