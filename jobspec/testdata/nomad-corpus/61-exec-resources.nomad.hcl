job "sized" {
  datacenters = ["dc1"]

  group "g" {
    count = 2

    task "t" {
      driver = "exec"

      config {
        command = "/usr/local/bin/worker"
      }

      resources {
        cpu    = 1500
        memory = 2048
      }
    }
  }
}
