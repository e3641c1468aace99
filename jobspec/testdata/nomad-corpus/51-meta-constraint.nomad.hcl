job "rack-aware" {
  datacenters = ["dc1"]

  group "g" {
    constraint {
      attribute = "${meta.rack}"
      operator  = "set_contains_any"
      value     = "r1,r2"
    }

    constraint {
      attribute = "${attr.os.name}"
      operator  = "regexp"
      value     = "^(ubuntu|debian)$"
    }

    task "t" {
      driver = "exec"

      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
  }
}
