job "cache-sticky" {
  datacenters = ["dc1"]

  group "cache" {
    ephemeral_disk {
      size   = 500
      sticky = true
    }

    task "redis" {
      driver = "docker"

      config {
        image = "redis:7"
        args  = ["--dir", "${NOMAD_ALLOC_DIR}/data"]
      }
    }
  }
}
