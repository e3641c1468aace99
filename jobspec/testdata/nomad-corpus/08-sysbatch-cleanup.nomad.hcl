job "cleanup" {
  datacenters = ["dc1"]
  type        = "sysbatch"

  group "cleanup" {
    task "prune" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "find /tmp -name 'scratch-*' -mtime +7 -delete"]
      }
    }
  }
}
