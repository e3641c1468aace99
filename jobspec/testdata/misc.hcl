# The smaller Nomad items: all_at_once, ui and a job migrate block the
# group's overrides field by field; a group scaling block with an
# autoscaler policy (count defaults to its min), shutdown delays,
# prevent_reschedule_on_lost; task kind, restart render_templates, logs
# disabled, memory_max, and the deprecated disk (kept, ignored).
job "web" {
  datacenters = ["dc1"]
  all_at_once = true

  ui {
    description = "The **web** frontend"
    link {
      label = "Runbook"
      url   = "https://example.com/runbook"
    }
    link {
      label = "Dashboard"
      url   = "http://grafana.local/d/web"
    }
  }

  migrate {
    max_parallel     = 2
    health_check     = "task_states"
    min_healthy_time = "15s"
  }

  group "frontend" {
    shutdown_delay             = "5s"
    prevent_reschedule_on_lost = true

    scaling {
      enabled = true
      min     = 2
      max     = 10

      policy {
        cooldown            = "1m"
        evaluation_interval = "30s"

        check "avg_cpu" {
          source = "nomad-apm"
          query  = "avg_cpu"

          strategy "target-value" {
            target = 70
          }
        }
      }
    }

    migrate {
      healthy_deadline = "2m"
    }

    restart {
      attempts         = 1
      render_templates = true
    }

    task "server" {
      driver         = "docker"
      kind           = "connect-proxy:web"
      shutdown_delay = "3s"

      config {
        image = "nginx:1.27"
      }

      logs {
        disabled = true
      }

      resources {
        cpu        = 200
        memory     = 256
        memory_max = "1 GiB"
        disk       = 500
      }
    }
  }

  group "worker" {
    count = 3

    scaling {
      max = 5
    }

    task "work" {
      driver = "raw_exec"

      config {
        command = "/bin/sleep"
        args    = ["60"]
      }

      logs {
        enabled = false
      }
    }
  }
}
