SET spark.databricks.delta.commitInfo.userMetadata = 'zbrecover:20261201T101500Z-1a2b3c4d:3:1'
