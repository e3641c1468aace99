job "meta-demo" {
  type = "batch"

  meta {
    owner = "platform"
  }

  group "g" {
    meta {
      tier = "gold"
    }

    task "t" {
      driver = "raw_exec"

      meta {
        color = "blue"
      }

      config {
        command = "/bin/sh"
        args    = ["-c", "echo ${NOMAD_META_owner} ${NOMAD_META_tier} ${NOMAD_META_color} ${node.unique.name} ${attr.kernel.name}"]
      }
    }
  }
}
