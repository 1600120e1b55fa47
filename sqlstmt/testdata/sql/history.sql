DESCRIBE HISTORY `main`.`sa``les`.`or ders` LIMIT 1000
