terraform {
  required_version = ">= 1.9" # variable validations read models.json
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.70, < 7.0"
    }
  }
}
