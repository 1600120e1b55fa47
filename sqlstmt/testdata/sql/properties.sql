SHOW TBLPROPERTIES `main`.`sa``les`.`or ders`
