job "spread-me" {
  datacenters = ["us-east-1", "us-west-2"]

  affinity {
    attribute = "${node.datacenter}"
    value     = "us-east-1"
    weight    = 50
  }

  spread {
    attribute = "${node.datacenter}"

    target "us-east-1" {
      percent = 60
    }

    target "us-west-2" {
      percent = 40
    }
  }

  group "g" {
    count = 10

    task "t" {
      driver = "docker"

      config {
        image = "busybox:1.36"
        args  = ["sleep", "infinity"]
      }
    }
  }
}
