job "web" {
  datacenters = ["dc1"]
  namespace   = "team-a"
  region      = "eu"

  meta {
    owner = "platform"
    tier  = 1
  }

  affinity {
    attribute = "${node.datacenter}"
    value     = "dc1"
    weight    = -20
  }

  group "frontend" {
    count = 3

    restart {
      attempts = 5
      interval = "5m"
      delay    = "10s"
      mode     = "delay"
    }

    meta = {
      "app.kubernetes/role" = "frontend"
    }

    constraint {
      distinct_hosts = true
    }

    task "nginx" {
      driver = "raw_exec"
      config {
        command = "nginx"
        args    = ["-g", "daemon off;"]
      }
      env {
        PORT = 8080
      }
      resources {
        cpu    = 500
        memory = 256
      }
    }

    task "sidecar" {
      driver = "raw_exec"
      config {
        command = "/bin/log-shipper"
      }
      meta {
        role = "logs"
      }
    }
  }

  group "worker" {
    count = 0

    restart {
      attempts = 1
    }

    constraint {
      attribute = "${meta.rack}"
      operator  = "set_contains_any"
      value     = "r1,r2"
    }

    task "work" {
      driver = "raw_exec"
      config {
        command = "worker"
      }
    }
  }
}
