job "class-pref" {
  datacenters = ["dc1"]

  group "g" {
    affinity {
      attribute = "${node.class}"
      value     = "compute"
      weight    = -50
    }

    task "t" {
      driver = "raw_exec"

      config {
        command = "/bin/sleep"
        args    = ["60"]
      }
    }
  }
}
