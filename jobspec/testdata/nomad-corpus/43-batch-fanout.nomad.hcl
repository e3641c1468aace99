job "fanout" {
  datacenters = ["dc1"]
  type        = "batch"

  group "shard" {
    count = 8

    task "work" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo shard ${NOMAD_ALLOC_INDEX} of ${NOMAD_GROUP_NAME}"]
      }

      resources {
        cpu    = 250
        memory = 128
      }
    }
  }

  group "reduce" {
    task "reduce" {
      driver = "raw_exec"

      config {
        command = "/bin/true"
      }
    }
  }
}
