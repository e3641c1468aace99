job "shorthands" {
  datacenters = ["dc1"]

  constraint {
    attribute = "${attr.nvidia.driver_version}"
    version   = ">= 535.0"
  }

  constraint {
    attribute = "${attr.os.version}"
    semver    = "~> 22.04"
  }

  constraint {
    attribute = "${node.class}"
    regexp    = "^gpu-"
  }

  constraint {
    distinct_property = "${meta.rack}"
    value             = "2"
  }

  constraint {
    attribute    = "${meta.features}"
    set_contains = "nvlink,ib"
  }

  constraint {
    distinct_hosts = false
  }

  affinity {
    attribute        = "${meta.zone}"
    set_contains_any = "a,b"
  }

  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "true"
      }
      affinity {
        attribute = "${attr.cpu.arch}"
        value     = "amd64"
        weight    = 100
      }
    }
  }
}
