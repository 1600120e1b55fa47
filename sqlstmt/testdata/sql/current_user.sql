SELECT current_user()
