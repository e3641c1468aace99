job "graceful" {
  datacenters = ["dc1"]

  group "g" {
    task "t" {
      driver       = "exec"
      kill_timeout = "45s"
      kill_signal  = "SIGINT"

      config {
        command = "/usr/local/bin/server"
      }

      env {
        LOG_LEVEL = "info"
        NODE      = "${node.unique.name}"
      }
    }
  }
}
