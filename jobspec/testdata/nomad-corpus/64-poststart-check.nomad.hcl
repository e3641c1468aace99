job "warmup" {
  datacenters = ["dc1"]

  group "g" {
    network {
      port "http" {}
    }

    task "server" {
      driver = "exec"

      config {
        command = "/usr/local/bin/server"
        args    = ["-listen", "${NOMAD_ADDR_http}"]
      }
    }

    task "warm-cache" {
      lifecycle {
        hook = "poststart"
      }

      driver = "raw_exec"

      config {
        command = "/usr/bin/curl"
        args    = ["-fsS", "http://${NOMAD_ADDR_http}/warm"]
      }
    }
  }
}
