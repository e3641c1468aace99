# A template that reads a Drover variable (README: Templates and variables).
# First: drover var put nomad/jobs/app db_pass=s3cret
job "app" {
  datacenters = ["dc1"]
  type        = "batch"

  group "app" {
    task "app" {
      driver = "raw_exec"
      template {
        data        = <<EOT
DB_PASS={{ with nomadVar "nomad/jobs/app" }}{{ .db_pass }}{{ end }}
EOT
        destination = "secrets/app.env"
        env         = true        # the rendered lines become the task's environment
        change_mode = "restart"   # restart | signal (with change_signal) | noop
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "echo db_pass is $DB_PASS"]
      }
    }
  }
}
