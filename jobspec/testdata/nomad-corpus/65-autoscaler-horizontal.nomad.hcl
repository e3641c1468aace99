job "webapp" {
  datacenters = ["dc1"]

  group "demo" {
    count = 3

    scaling {
      enabled = true
      min     = 1
      max     = 20

      policy {
        cooldown            = "20s"
        evaluation_interval = "10s"

        check "avg_sessions" {
          source = "prometheus"
          query  = "sum(traefik_entrypoint_open_connections{entrypoint=\"webapp\"})/scalar(nomad_nomad_job_summary_running{task_group=\"demo\"})"

          strategy "target-value" {
            target = 10
          }
        }
      }
    }

    task "webapp" {
      driver = "docker"

      config {
        image = "hashicorp/demo-webapp-lb-guide"
      }

      resources {
        cpu    = 100
        memory = 16
      }
    }
  }
}
