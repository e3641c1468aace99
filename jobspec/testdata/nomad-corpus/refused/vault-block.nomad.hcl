# want: Vault
job "vault-secrets" {
  datacenters = ["dc1"]

  group "g" {
    task "t" {
      driver = "docker"

      vault {
        policies = ["app-read"]
      }

      config {
        image = "example/app:1"
      }
    }
  }
}
