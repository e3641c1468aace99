job "app-config" {
  datacenters = ["dc1"]

  group "app" {
    task "app" {
      driver = "exec"

      config {
        command = "/usr/local/bin/app"
      }

      template {
        data        = <<EOH
{{ with nomadVar "nomad/jobs/app-config" }}
DB_PASSWORD={{ .db_password }}
{{ end }}
EOH
        destination = "secrets/app.env"
        env         = true
        change_mode = "restart"
      }
    }
  }
}
