DESCRIBE TABLE EXTENDED `main`.`sa``les`.`or ders` AS JSON
