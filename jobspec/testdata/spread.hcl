# Spreads at job and group level, as in Nomad.
job "inference" {
  datacenters = ["dc1", "dc2", "dc3"]

  spread {
    attribute = "${node.datacenter}"
    weight    = 80

    target "dc1" {
      percent = 70
    }
    target "dc2" {
      percent = 20
    }
  }

  group "api" {
    count = 10

    # Even spread over racks, default weight.
    spread {
      attribute = "${meta.rack}"
    }

    spread {
      attribute = "${node.class}"
      weight    = 10
      target "gpu-large" {}
      target "gpu-small" {
        percent = "40"
      }
    }

    task "serve" {
      driver = "raw_exec"
      config {
        command = "serve"
      }
    }
  }
}
