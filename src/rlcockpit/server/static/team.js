// team server additions
