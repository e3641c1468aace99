job "entrypoint" {
  type = "batch"

  group "g" {
    task "t" {
      driver = "docker"

      config {
        image      = "alpine:3.20"
        entrypoint = ["/bin/sh"]
        command    = "-c"
        args       = ["echo $NOMAD_TASK_NAME in $NOMAD_ALLOC_DIR"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
