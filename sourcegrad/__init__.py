"""sourcegrad"""
