CREATE TABLE IF NOT EXISTS `main`.`sales`.`orders__zbrecover_20261201t101500z_1a2b3c4d` AS SELECT *, CAST(NULL AS BIGINT) AS `__zbrecover_batch` FROM `main`.`sa``les`.`or ders` WHERE 1 = 0
