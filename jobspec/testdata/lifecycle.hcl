job "web" {
  datacenters = ["dc1"]

  group "app" {
    ephemeral_disk {
      size   = 500
      sticky = true
    }

    volume "data" {
      type      = "host"
      source    = "data"
      read_only = false
    }

    disconnect {
      lost_after = "10m"
      replace    = false
      reconcile  = "keep_original"
    }

    task "init" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      lifecycle {
        hook = "prestart"
      }
    }

    task "proxy" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      lifecycle {
        hook    = "poststart"
        sidecar = true
      }
    }

    task "main" {
      driver = "docker"
      leader = true
      config {
        image = "busybox"
      }
      volume_mount {
        volume      = "data"
        destination = "/srv"
        read_only   = true
      }
    }

    task "cleanup" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      lifecycle {
        hook = "poststop"
      }
    }
  }
}
