job "modern-kernel" {
  datacenters = ["dc1"]

  constraint {
    attribute = "${attr.kernel.version}"
    operator  = "version"
    value     = ">= 5.10"
  }

  constraint {
    attribute = "${attr.nomad.version}"
    operator  = "is_set"
  }

  group "g" {
    task "t" {
      driver = "exec"

      config {
        command = "/bin/true"
      }
    }
  }
}
