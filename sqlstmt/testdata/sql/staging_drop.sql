DROP TABLE IF EXISTS `main`.`sales`.`orders__zbrecover_20261201t101500z_1a2b3c4d`
