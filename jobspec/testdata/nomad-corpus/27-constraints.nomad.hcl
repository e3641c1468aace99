job "linux-only" {
  datacenters = ["dc1", "dc2"]

  constraint {
    attribute = "${attr.kernel.name}"
    value     = "linux"
  }

  constraint {
    attribute = "${attr.cpu.arch}"
    operator  = "="
    value     = "amd64"
  }

  group "g" {
    constraint {
      operator = "distinct_hosts"
      value    = "true"
    }

    count = 3

    task "t" {
      driver = "exec"

      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
    }
  }
}
