locals {
  app     = "billing"
  env     = "prod"
  job_id  = "${local.app}-${local.env}"
  version = "1.4.2"
}

job "billing-prod" {
  datacenters = ["dc1"]

  meta {
    app     = local.app
    version = local.version
  }

  group "app" {
    task "app" {
      driver = "docker"

      config {
        image = "example/${local.app}:${local.version}"
      }

      env {
        APP_ENV = upper(local.env)
      }
    }
  }
}
